from datetime import date, timedelta


def today() -> date:
    return date.today()


def days_between(a: date, b: date) -> int:
    return (b - a).days


def end_of_month(d: date) -> date:
    nxt = d.replace(day=28) + timedelta(days=4)
    return nxt - timedelta(days=nxt.day)
