# LD_PRELOAD: see Makefile.am
