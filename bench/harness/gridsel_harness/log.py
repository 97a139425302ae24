"""Progress lines on stdout, and the banner for what must not be missed."""


def log(msg):
    print(msg, flush=True)


def loud(msg):
    bar = "!" * 78
    print(f"{bar}\n!!! {msg}\n{bar}", flush=True)
