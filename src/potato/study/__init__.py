"""A study: the pages a participant goes through and their answers, the conditions that show a
question, the participants and the platforms they come from. No Flask here: the views are in
potato.server.study."""
