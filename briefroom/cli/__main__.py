"""`python -m briefroom.cli`, as the `briefroom` script."""

from briefroom.cli import main

main()
