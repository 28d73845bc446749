from .report import monthly_report

__all__ = ["monthly_report"]
