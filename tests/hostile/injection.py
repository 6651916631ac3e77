"""Markup in its name, its messages and its output (the test also gives this file a name with markup)."""


class Agent:
    name = "<script>alert('name')</script>"

    def act(self, observation, action_mask):
        print("<script>alert('stdout')</script>```\n<img src=x onerror=alert('out')>", flush=True)
        raise ValueError("<img src=x onerror=alert('message')> [link](javascript:alert(1)) ```")
