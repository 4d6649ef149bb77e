from dupes.cli import main

raise SystemExit(main())
