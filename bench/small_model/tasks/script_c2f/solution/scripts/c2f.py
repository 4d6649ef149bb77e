import sys

for arg in sys.argv[1:]:
    print(round(float(arg) * 9 / 5 + 32, 2))
