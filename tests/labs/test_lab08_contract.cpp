// Lab 08 contract tests: see the lab's rubric.
