"""Pictures and text views: a placement (:mod:`~mipopt.render.placement`) and a migration plan
(:mod:`~mipopt.render.plan`). Matplotlib is imported only when a picture is drawn."""
