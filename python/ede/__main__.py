import sys

from ede._cli import main

sys.exit(main())
