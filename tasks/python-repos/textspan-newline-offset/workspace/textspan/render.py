def numbered(lines, first, last, marked):
    width = len(str(last))
    return [f"{'>' if n == marked else ' '} {n:>{width}} | {lines[n - 1]}" for n in range(first, last + 1)]
