"""``python -m g2gsim``: the command-line interface (the same as the ``g2gsim`` command)."""
from .cli import main

if __name__ == "__main__":
    main(prog_name="g2gsim")
