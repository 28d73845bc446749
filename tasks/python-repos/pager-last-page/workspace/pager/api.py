from .bounds import page_slice
from .counts import total_pages


def paginate(items, page=1, per_page=10):
    pages = total_pages(len(items), per_page)
    if page > pages:
        raise IndexError(f"page {page} of {pages}")
    start, stop = page_slice(page, per_page)
    return {
        "items": items[start:stop],
        "page": page,
        "pages": pages,
        "has_next": page < pages,
        "has_prev": page > 1,
    }
