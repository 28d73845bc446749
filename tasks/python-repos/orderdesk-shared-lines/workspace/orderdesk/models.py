from dataclasses import dataclass, field


@dataclass
class Line:
    sku: str
    quantity: int
    unit_cents: int


@dataclass
class Order:
    customer: str = "guest"
    currency: str = "EUR"
    lines: list = field(default_factory=list)
