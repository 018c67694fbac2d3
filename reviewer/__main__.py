from reviewer.cli import entry

entry()
