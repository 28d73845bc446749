def check_width(header, fields, number):
    if len(fields) != len(header):
        raise ValueError(f"row {number} has {len(fields)} fields, the header {len(header)}")
