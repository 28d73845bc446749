import json

from .states import Status


def new_order(order_id):
    return {"id": order_id, "status": Status.NEW, "history": []}


def dump(order):
    return json.dumps({**order, "status": order["status"].value})


def load(text):
    data = json.loads(text)
    return {"id": data["id"], "status": Status(data["status"]), "history": list(data.get("history", []))}
