"""Project limits: the project_locks table, one row per project, locked
while a hold of the project is counted and inserted.

Revision ID: f1d3a9c6b274
Revises: e5b8a2c7d431
Create Date: 2026-11-26 16:15:00

"""

from alembic import op
import sqlalchemy as sa

revision = 'f1d3a9c6b274'
down_revision = 'e5b8a2c7d431'


def upgrade():
    op.create_table(
        'project_locks',
        sa.Column('created_at', sa.DateTime, nullable=True),
        sa.Column('updated_at', sa.DateTime, nullable=True),
        sa.Column('project_id', sa.String(255), primary_key=True),
        mysql_engine='InnoDB',
        mysql_charset='utf8mb4',
    )
