import csv
import sys

with open(sys.argv[1], newline="") as f:
    print(sum(float(row["amount"]) for row in csv.DictReader(f)))
