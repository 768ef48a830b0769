"""Write files/contacts.csv for the large-distinct-count task: 5,200 rows, deterministic (seeded).

Run once from this folder (`python generate.py`); the output is committed, this script is kept so
the file can be explained and rebuilt. 37 email domains; some are sub-domains or near-misses of
others (mail.example.org beside example.org), which count as different domains.
"""

import random

rng = random.Random(88)
bases = ["example.org", "example.com", "post.test", "inbox.test", "acme.test", "globex.test", "initech.test",
         "umbrella.test", "hooli.test", "stark.test", "wayne.test", "wonka.test", "tyrell.test", "cyberdyne.test",
         "soylent.test", "oscorp.test", "aperture.test", "vandelay.test", "dunder.test", "pied.test", "prestige.test",
         "gringotts.test", "monarch.test", "massive.test", "nakatomi.test", "octan.test", "planet.test", "sirius.test",
         "tessier.test", "virtucon.test", "zorg.test", "mail.example.org", "uk.acme.test", "acme.test.example.com",
         "hooli.co.test", "wonka2.test", "post.inbox.test"]
first = ["ana", "ben", "chen", "dara", "eli", "fay", "gus", "hana", "ivo", "jun", "kai", "lea", "milo", "nia", "omar"]
last = ["smith", "ng", "garcia", "kowalski", "okafor", "silva", "tanaka", "dubois", "berg", "rossi"]
cities = ["Lisbon", "Osaka", "Lagos", "Lyon", "Quito", "Perth", "Tartu", "Accra"]
rows = ["name,email,city"]
weights = [rng.randint(1, 40) for _ in bases]
for i in range(5200):
    f, l = rng.choice(first), rng.choice(last)
    domain = rng.choices(bases, weights=weights)[0]
    rows.append(f"{f.title()} {l.title()},{f}.{l}{i}@{domain},{rng.choice(cities)}")
with open("files/contacts.csv", "w") as out:
    out.write("\n".join(rows) + "\n")
