from .schedule import renewal_dates

__all__ = ["renewal_dates"]
