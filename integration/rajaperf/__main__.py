"""`python -m integration.rajaperf`."""

from integration.rajaperf.cli import main

main()
