"""Schema migrations (alembic) for ironic-alloc-dbsync and the tests."""

import collections
import os

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

from ironic_alloc.db.sqlalchemy import api as sqla_api


def _alembic_config(engine=None):
    path = os.path.join(os.path.dirname(__file__), 'sqlalchemy',
                        'alembic.ini')
    config = alembic_config.Config(path)
    if engine is not None:
        config.attributes['connection'] = engine
    return config


def upgrade(revision='head', engine=None):
    """Upgrade the schema to ``revision`` (default: the newest)."""
    alembic_command.upgrade(_alembic_config(engine), revision or 'head')


def version(engine=None):
    """The schema revision of the database, or None when empty."""
    engine = engine or sqla_api.get_engine()
    with engine.connect() as conn:
        return alembic_migration.MigrationContext.configure(
            conn).get_current_revision()


def head_revision():
    """The newest revision this code knows."""
    script = alembic_script.ScriptDirectory.from_config(_alembic_config())
    return script.get_current_head()


class SchemaState(collections.namedtuple('SchemaState',
                                         ('current', 'head'))):
    """The database's schema revision (None when empty) and the newest
    one this code knows."""

    @property
    def is_current(self):
        return self.current == self.head


def schema_state(engine=None):
    """The revision of the database and the head, for every command that
    compares them (dbsync check, the upgrade status check).

    :raises: the driver's error when the database cannot be read.
    """
    return SchemaState(version(engine), head_revision())
