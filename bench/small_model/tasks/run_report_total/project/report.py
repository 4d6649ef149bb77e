"""Revenue report: paid orders only, 7% shipping surcharge on orders of 5 or more items."""

import csv
from pathlib import Path


def order_value(row):
    value = int(row["qty"]) * float(row["unit_price"])
    if int(row["qty"]) >= 5:
        value *= 1.07
    return value


def main():
    with open(Path(__file__).parent / "data" / "orders.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "paid"]
    print(f"paid orders: {len(rows)}")
    print(f"grand total: {sum(order_value(r) for r in rows):.2f}")


if __name__ == "__main__":
    main()
