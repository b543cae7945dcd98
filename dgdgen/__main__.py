from dgdgen.cli import console

console()
