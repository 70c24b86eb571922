"""Web research behind the tool contract: `web_search` (a search provider: SearXNG or
Brave) and `fetch_url` (robots.txt, per-domain rate limit, timeouts, size cap, bounded
redirects, no private addresses), a cache in the data directory, and fetched pages
indexed like documents so their passages are retrieved and cited by URL.

Modules: `net` (address policy and the guarded HTTP client), `robots`, `extract`
(content types to text), `cache`, `index` (the run's index, which also takes pages),
`search` (providers), `fetch` (one URL, start to finish), `tools` (the two Tools and
what the Searcher and the run directory need of them).
"""
