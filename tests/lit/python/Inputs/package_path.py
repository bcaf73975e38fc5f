"""Prints where the imported mhac package lives, relative to the folder given."""

import os
import sys

import mhac

print(os.path.relpath(mhac.__file__, sys.argv[1]))
