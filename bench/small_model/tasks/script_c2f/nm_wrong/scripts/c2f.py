import sys

for arg in sys.argv[1:]:
    print(float(arg) * 5 / 9 + 32)
