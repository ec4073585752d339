from potato.cli import main

main()
