from dgdgen.cli import main

raise SystemExit(main())
