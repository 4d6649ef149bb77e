import csv
import sys


def main(path, column):
    with open(path, newline="") as f:
        print(sum(float(row[column]) for row in csv.DictReader(f)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
