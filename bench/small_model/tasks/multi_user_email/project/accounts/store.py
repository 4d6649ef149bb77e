import csv

from accounts.models import User


def load_users(path):
    """Read the users of a CSV file with a header row."""
    with open(path, newline="") as f:
        return [User(name=row["name"], age=int(row["age"])) for row in csv.DictReader(f)]
