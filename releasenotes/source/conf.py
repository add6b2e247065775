# Sphinx configuration of the ironic_alloc release notes (reno).

extensions = ['reno.sphinxext']

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
    openstackdocs_bug_tag = 'releasenotes'

project = 'ironic_alloc release notes'
copyright = 'The ironic_alloc team'
source_suffix = {'.rst': 'restructuredtext'}
master_doc = 'index'
exclude_patterns = ['_build']
pygments_style = 'native'
html_static_path = []
