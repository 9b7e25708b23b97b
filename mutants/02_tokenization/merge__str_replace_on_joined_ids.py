"""Joins the ids into a string and uses str.replace, so merge([12, 3], (2, 3), 9) gives [19]."""


def merge(ids, pair, new_id):
    text = ",".join(str(i) for i in ids)
    text = text.replace(f"{pair[0]},{pair[1]}", str(new_id))
    return [int(i) for i in text.split(",")] if text else []
