def summarize(records):
    """Count, total, mean, and the name of the largest value of (name, value) records (any iterable)."""
    records = list(records)
    count = len(records)
    total = sum(value for _, value in records)
    largest = max(records, key=lambda record: record[1], default=(None, 0))[0]
    return {"count": count, "total": total, "mean": total / count if count else 0.0, "largest": largest}
