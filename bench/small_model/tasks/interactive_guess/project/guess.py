"""A number guessing game. The secret changes with the seed word."""

import hashlib

SEED = "lantern"


def secret_number() -> int:
    return int(hashlib.sha256(SEED.encode()).hexdigest(), 16) % 50 + 1


def prize_code(secret: int) -> str:
    digest = hashlib.sha256(f"{SEED}:{secret}".encode()).hexdigest()
    return f"{digest[:4].upper()}-{secret * 37 % 101:03d}"


def main() -> None:
    secret = secret_number()
    tries = 0
    print("I am thinking of a number between 1 and 50.")
    while True:
        try:
            guess = int(input("Your guess: "))
        except ValueError:
            print("Please type a whole number.")
            continue
        except EOFError:
            print("\nBye.")
            return
        tries += 1
        if guess < secret:
            print("Too low.")
        elif guess > secret:
            print("Too high.")
        else:
            print(f"Correct, after {tries} tries! Your prize code is {prize_code(secret)}")
            return


if __name__ == "__main__":
    main()
