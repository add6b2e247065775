"""Entry points for WSGI servers (mod_wsgi, uWSGI, gunicorn)."""
