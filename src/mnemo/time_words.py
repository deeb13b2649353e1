"""The words for time in the languages mnemo reads (English, German, French, Spanish,
Portuguese, Italian): months, seasons, weekdays, units of time and small numbers, each
word with its value. The time a question asks about (recall/when.py) and the end a
statement gives (write/ends.py) read them."""

from __future__ import annotations


def _words(table: dict[int, str]) -> dict[str, int]:
    return {word: n for n, words in table.items() for word in words.split()}


MONTHS = _words(
    {
        1: "january jan januar janvier enero janeiro gennaio",
        2: "february feb februar février fevrier febrero fevereiro febbraio",
        3: "march mar märz maerz mars marzo março marco",
        4: "april apr avril abril aprile",
        5: "may mai mayo maio maggio",
        6: "june jun juni juin junio junho giugno",
        7: "july jul juli juillet julio julho luglio",
        8: "august aug août aout agosto",
        9: "september sep sept septembre septiembre setiembre setembro settembre",
        10: "october oct oktober octobre octubre outubro ottobre",
        11: "november nov novembre noviembre novembro",
        12: "december dec dezember décembre decembre diciembre dezembro dicembre",
    }
)
# the month a season starts in (northern hemisphere); each lasts three months
SEASONS = _words(
    {
        3: "spring frühling frühjahr printemps primavera",
        6: "summer sommer été ete verano verão verao estate",
        9: "autumn fall herbst automne otoño otono outono autunno",
        12: "winter hiver invierno inverno",
    }
)
WEEKDAYS = _words(
    {0: "monday", 1: "tuesday", 2: "wednesday", 3: "thursday", 4: "friday", 5: "saturday", 6: "sunday"}
)
UNITS = _words(
    {
        1: "day days tag tage tagen jour jours día días dia dias giorno giorni",
        7: "week weeks woche wochen semaine semaines semana semanas settimana settimane",
        30: "month months monat monate monaten mois mes meses mês mese mesi",
        365: "year years jahr jahre jahren an ans année années año años ano anos anno anni",
    }
)
NUMBERS = _words(
    {
        1: "a an one ein eine einem einer un une una um uma",
        2: "two zwei deux dos dois duas due couple",
        3: "three drei trois tres três tre",
        4: "four vier quatre cuatro quatro quattro",
        5: "five fünf cinq cinco cinque",
        6: "six sechs seis sei",
        7: "seven sieben sept siete sete sette",
        8: "eight acht huit ocho oito otto",
        9: "nine neun neuf nueve nove",
        10: "ten zehn dix diez dez dieci",
    }
)
# the days of the week in the other five (the time a question asks about reads English's only)
OTHER_WEEKDAYS = _words(
    {
        0: "montag lundi lunes segunda lunedì lunedi",
        1: "dienstag mardi martes terça terca martedì martedi",
        2: "mittwoch mercredi miércoles miercoles quarta mercoledì mercoledi",
        3: "donnerstag jeudi jueves quinta giovedì giovedi",
        4: "freitag vendredi viernes sexta venerdì venerdi",
        5: "samstag sonnabend samedi sábado sabado sabato",
        6: "sonntag dimanche domingo domenica",
    }
)
