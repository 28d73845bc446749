PLANS = {"monthly": 1, "quarterly": 3, "yearly": 12}


def months_per_period(plan):
    try:
        return PLANS[plan]
    except KeyError:
        raise ValueError(f"unknown plan {plan!r}") from None
