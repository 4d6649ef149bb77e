"""The turn loop and what it is made of: messages, the tool table, dispatch, context, prompts."""
