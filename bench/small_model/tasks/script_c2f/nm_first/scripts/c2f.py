import sys

print(float(sys.argv[1]) * 9 / 5 + 32)
