import sys

for arg in sys.argv[1:]:
    print(round(float(arg) * 0.621371, 2))
