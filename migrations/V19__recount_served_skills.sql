-- Skills whose frontmatter no YAML parser reads as given (read line by line)
-- are left out of Skills over MCP from now on (`frontmatter_not_yaml`): every
-- source's tally of served skills is counted again from its rows on open.
UPDATE sources SET skill_census = NULL;
