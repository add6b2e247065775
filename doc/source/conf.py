# Sphinx configuration of the ironic_alloc documentation.

import os
import sys

# NOTE: importing ironic_alloc first selects oslo.service's threading
# backend; the option listings below import oslo.messaging, which would
# otherwise select the eventlet backend and make ironic_alloc unimportable.
sys.path.insert(0, os.path.abspath(os.path.join('..', '..')))
import ironic_alloc  # noqa: E402,F401

extensions = [
    'oslo_config.sphinxext',
    'oslo_config.sphinxconfiggen',
    'oslo_policy.sphinxext',
    'oslo_policy.sphinxpolicygen',
]

try:
    import openstackdocstheme  # noqa: F401
except ImportError:
    html_theme = 'alabaster'
else:
    extensions.append('openstackdocstheme')
    html_theme = 'openstackdocs'
    openstackdocs_repo_name = 'ironic_alloc'
    openstackdocs_pdf_link = False
    openstackdocs_use_storyboard = False
    openstackdocs_auto_name = False
    openstackdocs_bug_project = 'ironic_alloc'
    openstackdocs_bug_tag = 'doc'

# oslo_config.sphinxconfiggen writes _static/ironic-alloc.conf.sample (not
# committed) from the same generator file as "tox -e genconfig".
config_generator_config_file = [
    ('../../tools/config/ironic-alloc-config-generator.conf',
     '_static/ironic-alloc'),
]

# oslo_policy.sphinxpolicygen writes _static/ironic-alloc.policy.yaml.sample
# (not committed) from the same generator file as "tox -e genpolicy".
policy_generator_config_file = (
    '../../tools/config/ironic-alloc-policy-generator.conf')
sample_policy_basename = '_static/ironic-alloc'

project = 'ironic_alloc'
copyright = 'The ironic_alloc team'
source_suffix = {'.rst': 'restructuredtext'}
master_doc = 'index'
exclude_patterns = ['_build']
pygments_style = 'native'
html_static_path = ['_static']
# NOTE: _static holds only the generated samples, which are not committed;
# Sphinx checks the path before the generators run, so a fresh checkout
# would fail the warnings-as-errors build without it.
os.makedirs(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         '_static'), exist_ok=True)

man_pages = [
    ('cli/ironic-alloc', 'ironic-alloc',
     'API and conductor in one process', ['The ironic_alloc team'], 1),
    ('cli/ironic-alloc-api', 'ironic-alloc-api',
     'ironic_alloc API server', ['The ironic_alloc team'], 1),
    ('cli/ironic-alloc-conductor', 'ironic-alloc-conductor',
     'ironic_alloc conductor', ['The ironic_alloc team'], 1),
    ('cli/ironic-alloc-dbsync', 'ironic-alloc-dbsync',
     'ironic_alloc database schema tool', ['The ironic_alloc team'], 1),
]
