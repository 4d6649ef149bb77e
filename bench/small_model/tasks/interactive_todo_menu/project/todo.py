"""A small to-do list kept in todo.json; every change is also logged to todo.log."""

import json
from datetime import date
from pathlib import Path

STORE = Path("todo.json")
LOG = Path("todo.log")


def load():
    return json.loads(STORE.read_text()) if STORE.exists() else []


def save(items, what):
    STORE.write_text(json.dumps(items, indent=2) + "\n")
    with LOG.open("a") as log:
        log.write(f"{date.today().isoformat()} {what}\n")


def show(items):
    for number, item in enumerate(items, 1):
        mark = "x" if item["done"] else " "
        print(f"  {number}. [{mark}] {item['title']}")


def main():
    items = load()
    while True:
        print(f"\nTODO ({len(items)} items)")
        print("1) add  2) list  3) done  4) quit")
        choice = input("choice> ").strip()
        if choice == "1":
            title = input("title> ").strip()
            if title:
                items.append({"title": title, "done": False})
                save(items, f"added {title!r}")
        elif choice == "2":
            show(items)
        elif choice == "3":
            show(items)
            picked = input("number> ").strip()
            if picked.isdigit() and 1 <= int(picked) <= len(items):
                item = items[int(picked) - 1]
                item["done"] = True
                save(items, f"done {item['title']!r}")
            else:
                print("no such item")
        elif choice == "4":
            print("bye")
            return
        else:
            print("pick 1, 2, 3 or 4")


if __name__ == "__main__":
    main()
