from tally.cli import main

main()
