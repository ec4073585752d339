"""What a finished run produces for people: the learning curve and the push to the Hugging Face Hub."""
