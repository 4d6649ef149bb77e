import sys

from accounts.store import load_users
from accounts.views import describe

for user in load_users(sys.argv[1] if len(sys.argv) > 1 else "users.csv"):
    print(describe(user))
