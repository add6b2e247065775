"""Initial schema: nodes, node traits and conductors.

Revision ID: 5a1c2c6f8e01
Revises:
Create Date: 2026-11-22 03:40:00

"""

from alembic import op
from oslo_db.sqlalchemy import types as db_types
import sqlalchemy as sa

revision = '5a1c2c6f8e01'
down_revision = None

_TABLE_ARGS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def _timestamps():
    return [sa.Column('created_at', sa.DateTime, nullable=True),
            sa.Column('updated_at', sa.DateTime, nullable=True)]


def upgrade():
    op.create_table(
        'conductors',
        *_timestamps(),
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('hostname', sa.String(255), nullable=False),
        sa.Column('conductor_group', sa.String(255), nullable=False,
                  server_default=''),
        sa.Column('online', sa.Boolean, nullable=False),
        sa.Column('heartbeat_at', sa.DateTime, nullable=True),
        sa.UniqueConstraint('hostname', name='uniq_conductors0hostname'),
        sqlite_autoincrement=True,
        **_TABLE_ARGS)

    json = db_types.JsonEncodedDict
    op.create_table(
        'nodes',
        *_timestamps(),
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=True),
        sa.Column('driver', sa.String(255), nullable=False),
        sa.Column('resource_class', sa.String(80), nullable=True),
        sa.Column('description', sa.Text, nullable=True),
        sa.Column('properties', json, nullable=True),
        sa.Column('extra', json, nullable=True),
        sa.Column('driver_info', json, nullable=True),
        sa.Column('driver_internal_info', json, nullable=True),
        sa.Column('instance_info', json, nullable=True),
        sa.Column('instance_uuid', sa.String(36), nullable=True),
        sa.Column('interfaces', json, nullable=True),
        sa.Column('chassis_uuid', sa.String(36), nullable=True),
        sa.Column('provision_state', sa.String(15), nullable=True),
        sa.Column('target_provision_state', sa.String(15), nullable=True),
        sa.Column('provision_updated_at', sa.DateTime, nullable=True),
        sa.Column('power_state', sa.String(15), nullable=True),
        sa.Column('target_power_state', sa.String(15), nullable=True),
        sa.Column('maintenance', sa.Boolean, nullable=False),
        sa.Column('maintenance_reason', sa.Text, nullable=True),
        sa.Column('fault', sa.String(255), nullable=True),
        sa.Column('last_error', sa.Text, nullable=True),
        sa.Column('reservation', sa.String(255), nullable=True),
        sa.Column('conductor_affinity', sa.Integer, nullable=True),
        sa.Column('conductor_group', sa.String(255), nullable=False,
                  server_default=''),
        sa.Column('owner', sa.String(255), nullable=True),
        sa.Column('lessee', sa.String(255), nullable=True),
        sa.Column('protected', sa.Boolean, nullable=False),
        sa.Column('protected_reason', sa.Text, nullable=True),
        sa.Column('retired', sa.Boolean, nullable=False),
        sa.Column('retired_reason', sa.Text, nullable=True),
        sa.Column('automated_clean', sa.Boolean, nullable=True),
        sa.Column('console_enabled', sa.Boolean, nullable=False),
        sa.Column('raid_config', json, nullable=True),
        sa.Column('target_raid_config', json, nullable=True),
        sa.Column('clean_step', json, nullable=True),
        sa.Column('deploy_step', json, nullable=True),
        sa.Column('network_data', json, nullable=True),
        sa.Column('boot_mode', sa.String(16), nullable=True),
        sa.Column('secure_boot', sa.Boolean, nullable=True),
        sa.Column('inspection_started_at', sa.DateTime, nullable=True),
        sa.Column('inspection_finished_at', sa.DateTime, nullable=True),
        sa.Column('allocation_id', sa.Integer, nullable=True),
        sa.UniqueConstraint('uuid', name='uniq_nodes0uuid'),
        sa.UniqueConstraint('name', name='uniq_nodes0name'),
        sa.UniqueConstraint('instance_uuid', name='uniq_nodes0instance_uuid'),
        **_TABLE_ARGS)
    op.create_index('nodes_candidate_idx', 'nodes',
                    ['resource_class', 'provision_state', 'maintenance',
                     'uuid'])
    op.create_index('nodes_conductor_group_idx', 'nodes', ['conductor_group'])
    op.create_index('nodes_reservation_idx', 'nodes', ['reservation'])
    op.create_index('nodes_owner_idx', 'nodes', ['owner'])
    op.create_index('nodes_lessee_idx', 'nodes', ['lessee'])
    op.create_index('nodes_allocation_id_idx', 'nodes', ['allocation_id'])

    op.create_table(
        'node_traits',
        *_timestamps(),
        sa.Column('node_id', sa.Integer,
                  sa.ForeignKey('nodes.id', ondelete='CASCADE'),
                  primary_key=True, nullable=False),
        sa.Column('trait', sa.String(255), primary_key=True, nullable=False),
        **_TABLE_ARGS)
    op.create_index('node_traits_idx', 'node_traits', ['trait', 'node_id'])
