"""Derive ``ssi2012/tastes_gender.csv`` from the SSI-2012 survey (CC BY 4.0, Lizardo & Skiles).

Public data: the 20 music-genre taste ratings (``*taste`` columns) coded as
ratings 1 = dislike, 2 = neither like nor dislike, 3 = like, and 0 = unrated
("I am not familiar with this type of music" or missing), the same convention
as 0 = unrated in TV-show ratings. Private attribute: ``gender`` (female/male).
Rows with unknown gender or with no rated genre are dropped.

Run from the repository root: ``python data/prepare_ssi2012.py``; the output is
committed, so this only documents (and re-checks) how it was made.
"""
import csv
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE / "ssi2012" / "ssi2012_cleaned.csv"
TARGET = HERE / "ssi2012" / "tastes_gender.csv"
GENRES = [
    "classical", "opera", "jazz", "bwayst", "moodez", "bband", "crold", "country",
    "blueg", "folk", "hymgos", "latspsal", "raphiphop", "blurb", "reggae", "toppop",
    "controck", "indalt", "danclub", "hvymtl",
]
CODES = {"dislike": 1, "neither like nor dislike": 2, "like": 3,
         "I am not familiar with this type of music": 0, "NA": 0}


def main() -> None:
    with SOURCE.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    kept = 0
    with TARGET.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(GENRES + ["gender"])
        for row in rows:
            ratings = [CODES[row[g + "taste"]] for g in GENRES]
            if row["female"] not in ("female", "male") or not any(ratings):
                continue
            out.writerow(ratings + [row["female"]])
            kept += 1
    print(f"wrote {TARGET.name}: {kept} of {len(rows)} rows")


if __name__ == "__main__":
    main()
