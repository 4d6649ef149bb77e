import csv
import sys

with open(sys.argv[1], newline="") as f:
    print(sum(int(float(row[sys.argv[2]])) for row in csv.DictReader(f)))
