from alembic import context

from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models

target_metadata = models.Base.metadata


def run_migrations_online():
    """Run migrations on the engine handed over by migration.py.

    The engine is passed in ``config.attributes['connection']`` by tests
    and ironic-alloc-dbsync; otherwise the configured engine is used.
    """
    connectable = context.config.attributes.get('connection')
    if connectable is None:
        connectable = sqla_api.get_engine()
    with connectable.connect() as connection:
        context.configure(connection=connection,
                          target_metadata=target_metadata,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


run_migrations_online()
