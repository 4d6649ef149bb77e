"""Register for the hackathon: answers three questions, prints a ticket."""

import zlib

TEAMS = ("red", "blue", "green")


def ask(question: str, allowed=None) -> str:
    while True:
        answer = input(question).strip()
        if answer and (allowed is None or answer.lower() in allowed):
            return answer
        print("Please answer with one of: " + ", ".join(allowed) if allowed else "Please answer.")


def main() -> None:
    name = ask("Your name: ")
    team = ask("Team (red/blue/green): ", TEAMS).lower()
    if ask(f"Register {name} on team {team}? (y/n): ", ("y", "n")).lower() != "y":
        print("Nothing registered.")
        return
    ticket = zlib.crc32(f"{name.lower()}|{team}".encode()) % 900000 + 100000
    print(f"Registered {name} on team {team}. Ticket: T-{ticket}")


if __name__ == "__main__":
    main()
