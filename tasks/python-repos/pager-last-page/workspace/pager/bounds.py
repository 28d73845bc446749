def page_slice(page, per_page):
    """The (start, stop) indices of a 1-based page."""
    if page < 1 or per_page < 1:
        raise ValueError("page and per_page start at 1")
    start = (page - 1) * per_page
    return start, start + per_page
