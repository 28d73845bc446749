def total_pages(count, per_page):
    """How many pages `count` items fill; an empty listing still has one (empty) page."""
    return max(1, -(-count // per_page))
