"""A handful of real-looking passages shared by the retrieval tests."""

from agentic_infer.tools.retrieval import Document

SAMPLE_DOCS = [
    Document(
        "canberra",
        "Canberra",
        "Canberra is the capital city of Australia, chosen as a compromise between Sydney and Melbourne.",
    ),
    Document(
        "sydney",
        "Sydney",
        "Sydney is the most populous city in Australia and home to the Sydney Opera House.",
    ),
    Document(
        "ottawa",
        "Ottawa",
        "Ottawa is the capital of Canada and stands on the south bank of the Ottawa River.",
    ),
    Document(
        "dune", "Dune (novel)", "Dune is a 1965 science fiction novel by the American author Frank Herbert."
    ),
    Document(
        "herbert",
        "Frank Herbert",
        "Frank Herbert was an American science fiction author best known for Dune.",
    ),
]
